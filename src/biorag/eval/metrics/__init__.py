"""Evaluation measures and :func:`score_dataset`, which picks them by dataset and question type.

* multiple choice (MedQA, MedMCQA, MMLU, PubMedQA as A/B/C): accuracy (:mod:`.qa`); PubMedQA adds
  macro-F1 over yes/no/maybe, as its official ``evaluation.py`` does; per-subset accuracy where
  items carry a ``subset`` (e.g. the MMLU subject); yes/no(/maybe) questions that carry options
  outside BioASQ (MIRAGE's pubmedqa and bioasq subsets) are choice questions too;
* BioASQ (:mod:`.bioasq`): yes/no accuracy and macro-F1, factoid strict/lenient accuracy and MRR,
  list precision/recall/F1, document precision/recall/F1/MAP/GMAP when predictions carry
  ``documents``; summary questions are counted, not scored;
* MASH-QA (:mod:`.mashqa`): sentence precision/recall/F1/exact match;
* BioCDQA: document precision/recall/F1 (:mod:`.retrieval`); its answers are judged by an LLM
  elsewhere. Other datasets get the same document block when predictions carry ``documents``
  and items carry ``gold_docs``.

A prediction is a mapping with at least ``prediction`` (a letter, a text, or a list; ``answer``
is accepted as an alias) and optionally ``documents`` (ranked ids), ``sentences`` and
``parse_failed``. A bare value stands for ``{"prediction": value}``. A missing prediction, an empty
one, or one marked ``parse_failed`` is scored as wrong (never dropped from the denominator).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.eval.metrics.bioasq import (
    MAX_FACTOID,
    document_measures,
    factoid_measures,
    list_measures,
    yesno_measures,
)
from biorag.eval.metrics.mashqa import sentence_measures
from biorag.eval.metrics.official import (
    check_scoring,
    mean_of_subsets,
    mirage_locate_answer,
    sklearn_choice,
)
from biorag.eval.metrics.qa import accuracy, is_unanswered, macro_f1, per_subset
from biorag.eval.metrics.retrieval import mean_document_prf, retrieval_measures
from biorag.eval.metrics.snippets import snippet_measures

__all__ = [
    "accuracy",
    "dataset_family",
    "document_measures",
    "factoid_measures",
    "list_measures",
    "macro_f1",
    "mean_document_prf",
    "per_subset",
    "retrieval_measures",
    "score_dataset",
    "sentence_measures",
    "yesno_measures",
]


def dataset_family(dataset: str) -> str:
    """``pubmedqa``, ``bioasq``, ``mashqa``, ``biocdqa`` or ``generic`` from a dataset name."""
    key = re.sub(r"[^a-z0-9]", "", dataset.lower())
    for family in ("pubmedqa", "bioasq", "mashqa", "biocdqa"):
        if family in key:
            return family
    return "generic"


def _entry(predictions: Mapping[str, Any], item_id: str) -> dict[str, Any] | None:
    value = predictions.get(item_id)
    if value is None:
        return None
    if isinstance(value, Mapping):
        entry = dict(value)
        if "prediction" not in entry and "answer" in entry:
            entry["prediction"] = entry["answer"]
        return entry
    return {"prediction": value}


def _value(entry: dict[str, Any] | None, key: str = "prediction") -> Any:
    """The entry's field, or ``None`` when there is no entry or it failed to parse."""
    if entry is None or entry.get("parse_failed"):
        return None
    return entry.get(key)


def _has_answer(entry: dict[str, Any]) -> bool:
    return any(not is_unanswered(entry.get(k)) for k in ("prediction", "sentences", "documents"))


def _choice(value: Any, options: Mapping[str, str]) -> str | None:
    """An option letter for a letter or an option text (case-insensitive); else the text."""
    if is_unanswered(value) or not isinstance(value, str | int):
        return None
    s = str(value).strip()
    for k in options:
        if k.casefold() == s.casefold():
            return k
    for k, text in options.items():
        if text.strip().casefold() == s.casefold():
            return k
    return s


def _label(value: Any, options: Mapping[str, str]) -> str | None:
    """The option text a letter stands for (e.g. "yes"), or the value's own text."""
    c = _choice(value, options)
    if c is None:
        return None
    return options.get(c, c).strip().casefold()


def _gold_sentences(item: QAItem) -> list[Any]:
    if isinstance(item.gold, list | tuple):
        return list(item.gold)
    return list(item.gold_snippets)


def _pred_sentences(entry: dict[str, Any] | None) -> list[Any]:
    sents = _value(entry, "sentences")
    if is_unanswered(sents):
        pred = _value(entry)
        sents = pred if isinstance(pred, list | tuple) else None
    return list(sents) if sents else []


def _score_choice(
    items: list[QAItem], entries: list[Any], family: str, scoring: str, mirage: bool
) -> dict[str, Any]:
    """Accuracy (and, for PubMedQA, macro-F1 over the option texts) of option-letter answers,
    as the official tool or as biorag computes them (:mod:`.official`)."""
    subsets = [it.subset for it in items]
    golds = [_choice(it.gold, it.options) for it in items]
    preds = [_choice(_value(e), it.options) for it, e in zip(items, entries, strict=True)]
    if mirage and scoring == "official":  # MIRAGE's evaluator reads every output it was given
        preds = [
            p if p is not None or e is None else mirage_locate_answer(str(e.get("raw_output", "")))
            for p, e in zip(preds, entries, strict=True)
        ]
    out: dict[str, Any] = {"accuracy": accuracy(golds, preds)}
    by_subset = per_subset(subsets, golds, preds) if any(subsets) else {}
    if family == "pubmedqa":
        lg = [_label(it.gold, it.options) for it in items]
        lp = [_label(_value(e), it.options) for it, e in zip(items, entries, strict=True)]
        f1 = (lambda g, p: sklearn_choice(g, p)["macro_f1"]) if scoring == "official" else macro_f1
        out["macro_f1"] = f1(lg, lp)
        if by_subset:
            for name, row in per_subset(subsets, lg, lp, {"macro_f1": f1}).items():
                by_subset[name]["macro_f1"] = row["macro_f1"]
    if by_subset:
        out["per_subset"] = by_subset
        if mirage and scoring == "official":  # MIRAGE's score: the mean of its subsets
            out["accuracy_pooled"] = out["accuracy"]
            out["accuracy"] = mean_of_subsets(by_subset)
    return out


def _split(pairs: list[tuple[QAItem, Any]]) -> tuple[list[QAItem], list[Any]]:
    """The items and the entries of a list of (item, entry) pairs."""
    return [it for it, _ in pairs], [e for _, e in pairs]


def _counts(dataset: str, items: list[QAItem], entries: list[Any], scoring: str) -> dict[str, Any]:
    """The report's head: dataset, item count, answered/unparseable/missing counts, scoring."""
    return {
        "dataset": dataset,
        "n": len(items),
        "answered": sum(
            1 for e in entries if e is not None and not e.get("parse_failed") and _has_answer(e)
        ),
        "unparseable": sum(1 for e in entries if e is not None and e.get("parse_failed")),
        "missing": sum(1 for e in entries if e is None),
        "scoring": scoring,
    }


def _choice_pairs(
    items: list[QAItem], entries: list[Any], pairs: list[tuple[QAItem, Any]], family: str
) -> tuple[list[QAItem], list[Any]]:
    """The items (and entries) scored as choice questions for the dataset family."""
    # Choice questions: everything in PubMedQA; elsewhere multiple choice, and yes/no(/maybe)
    # questions with options (MIRAGE) except in BioASQ, whose yes/no has its own measures.
    if family == "pubmedqa":
        return items, entries
    return _split(
        [
            (it, e)
            for it, e in pairs
            if it.question_type == "multiple_choice"
            or (it.question_type == "yesno" and it.options and family != "bioasq")
        ]
    )


def _score_typed(
    items: list[QAItem], pairs: list[tuple[QAItem, Any]], family: str, official: bool
) -> dict[str, Any]:
    """The yes/no, factoid, list, summary and sentence blocks (not used for PubMedQA)."""
    out: dict[str, Any] = {}

    def of(*types: str) -> tuple[list[QAItem], list[Any]]:
        return _split([(it, e) for it, e in pairs if it.question_type in types])

    if family == "mashqa":
        sp_items, sp_entries = items, [e for _, e in pairs]
    else:
        sp_items, sp_entries = of("span")
    yn_items, yn_entries = _split(
        [
            (it, e)
            for it, e in pairs
            if it.question_type == "yesno" and (family == "bioasq" or not it.options)
        ]
    )
    if yn_items:
        out["yesno"] = yesno_measures(
            [_label(it.gold, it.options) for it in yn_items],
            [_label(_value(e), it.options) for it, e in zip(yn_items, yn_entries, strict=True)],
            official=official,
        )
    q_items, q_entries = of("factoid")
    if q_items:  # official: every submitted candidate, its first synonym, a string one
        out["factoid"] = factoid_measures(
            [it.gold for it in q_items],
            [_value(e) for e in q_entries],
            k=MAX_FACTOID,
            official=official,
        )
    q_items, q_entries = of("list")
    if q_items:
        out["list"] = list_measures(
            [it.gold for it in q_items], [_value(e) for e in q_entries], official=official
        )
    summ = sum(1 for it in items if it.question_type in ("summary", "free"))
    if summ and family in ("bioasq", "generic"):
        out["summary"] = {"n": summ}
    if sp_items:
        out["sentences"] = sentence_measures(
            [_gold_sentences(it) for it in sp_items], [_pred_sentences(e) for e in sp_entries]
        )
    return out


def _score_documents(
    pairs: list[tuple[QAItem, Any]], entries: list[Any], family: str, official: bool
) -> dict[str, Any] | None:
    """The document block, or ``None`` when there are no gold documents or none are wanted."""
    with_docs = [(it, e) for it, e in pairs if it.gold_docs]
    wants_docs = family in ("bioasq", "biocdqa") or any(
        e is not None and "documents" in e for e in entries
    )
    if not (with_docs and wants_docs):
        return None
    golds = [it.gold_docs for it, _ in with_docs]
    # Retrieval is scored even when the answer failed to parse.
    preds = [(e or {}).get("documents") or [] for _, e in with_docs]
    if family == "bioasq":  # official: every submitted id counts, each once
        return (
            document_measures(golds, preds, max_docs=None)
            if official
            else document_measures(golds, preds)
        )
    return mean_document_prf(golds, preds)


def score_dataset(
    dataset: str,
    items: Sequence[QAItem],
    predictions: Mapping[str, Any],
    scoring: str = "official",
) -> dict[str, Any]:
    """Score ``predictions`` (item id -> prediction) on ``items`` with the dataset's measures,
    as the benchmark's official evaluator does (``scoring="official"``) or as biorag's variants
    do (``"biorag"``; see :mod:`.official`).

    Returns ``dataset``, ``n`` (items), ``answered`` (a non-empty prediction that parsed),
    ``unparseable`` (``parse_failed``), ``missing`` (no prediction), then one block per measure
    family present: ``accuracy``/``macro_f1``/``per_subset`` for multiple choice, ``yesno``,
    ``factoid``, ``list``, ``summary`` (count only), ``sentences``, ``documents`` and (BioASQ
    over an index) ``snippets``.
    """
    check_scoring(scoring)
    official = scoring == "official"
    family = dataset_family(dataset)
    mirage = "mirage" in dataset.lower()
    items = list(items)
    entries = [_entry(predictions, it.id) for it in items]
    out = _counts(dataset, items, entries, scoring)
    pairs = list(zip(items, entries, strict=True))

    mc_items, mc_entries = _choice_pairs(items, entries, pairs, family)
    if mc_items:
        out.update(_score_choice(mc_items, mc_entries, family, scoring, mirage))
    if family != "pubmedqa":
        out.update(_score_typed(items, pairs, family, official))
    documents = _score_documents(pairs, entries, family, official)
    if documents is not None:
        out["documents"] = documents
    snippets = _score_snippets(pairs, official)
    if snippets is not None:
        out["snippets"] = snippets
    return out


def _score_snippets(pairs: list[tuple[QAItem, Any]], official: bool) -> dict[str, Any] | None:
    """BioASQ's snippet measures (:mod:`.snippets`) over every question with gold snippet
    offsets once any answer was recorded with snippets (a run over an index), else ``None``.
    As the evaluator does, a question whose answer has no snippet list (missing, failed or
    given none) counts as one that found none. Official scoring reads the gold offsets as the
    golden file gives them (every snippet, as the evaluator does); biorag's the stripped
    texts' places (``gold_snippet_spans``)."""
    if not any(isinstance(e, dict) and "snippets" in e for _, e in pairs):
        return None
    key = "gold_snippets_official" if official else "gold_snippet_spans"
    scored = [
        (it.meta[key], (e.get("snippets") if isinstance(e, dict) else None) or [])
        for it, e in pairs
        if it.meta.get(key)
    ]
    if not scored:
        return None
    return snippet_measures([g for g, _ in scored], [p for _, p in scored], official=official)
