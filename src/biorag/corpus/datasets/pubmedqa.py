"""PubMedQA PQA-L (``ori_pqal.json``): 1,000 expert-labelled yes/no/maybe questions.

Input: ``{pmid: {QUESTION, CONTEXTS: [str], LABELS, MESHES, YEAR, LONG_ANSWER, final_decision}}``
(``path`` may be the file or its folder). Each item: ``id`` = ``gold_docs[0]`` = the PMID,
``options`` A=yes B=no C=maybe, ``gold`` = the letter of ``final_decision``,
``question_type="yesno"`` (options are set, so readers treat it like a three-option choice).

``split``: ``"test"`` keeps the 500 PMIDs of ``test_ground_truth.json`` (beside the file, or
``ground_truth=``), ``"dev"`` the other 500, None all. ``setting``: ``"reasoning-required"``
puts the question's own abstract (CONTEXTS, without its conclusion) into ``context``;
``"open"`` (or None) leaves it empty, to answer from a retrieval corpus.

LONG_ANSWER is the abstract's conclusion, i.e. the answer: it is never copied into an item
(so the paper's "reasoning-free" setting, which shows it, is refused). Nor are the original
``reasoning_*_pred`` model predictions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    check_choice,
    format_error,
    line_of,
    read_json,
    resolve_file,
)
from biorag.errors import ConfigError

NAME = "pubmedqa"
SPLITS = ("test", "dev")
SETTINGS = ("open", "reasoning-required")
OPTIONS = {"A": "yes", "B": "no", "C": "maybe"}
LETTER = {v: k for k, v in OPTIONS.items()}
EXPECTED = "PubMedQA JSON ({pmid: {QUESTION, CONTEXTS, final_decision, ...}}, e.g. ori_pqal.json)"
GT_EXPECTED = "PubMedQA test_ground_truth.json ({pmid: 'yes'|'no'|'maybe'})"


def _ground_truth(pqal: Path, given: str | Path | None) -> dict[str, str]:
    """The test split ``{pmid: label}`` from ``given`` or ``test_ground_truth.json`` beside."""
    path = Path(given) if given is not None else pqal.parent / "test_ground_truth.json"
    if not path.is_file():
        raise format_error(
            path,
            GT_EXPECTED,
            "the file does not exist",
            "put test_ground_truth.json beside ori_pqal.json or pass ground_truth=PATH",
        )
    data, _ = read_json(path, GT_EXPECTED)
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise format_error(
            path, GT_EXPECTED, "it is not an object of PMID -> label", "pass the right file"
        )
    return {str(k): v for k, v in data.items()}


def _item(pmid: str, rec: Any, reasoning: bool, split: str | None) -> QAItem:
    """One item from a PQA-L record; :class:`ValueError` says what is wrong with it."""
    if not isinstance(rec, dict):
        raise ValueError(f"value is {type(rec).__name__}, expected an object")
    question = rec.get("QUESTION")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("missing or empty 'QUESTION'")
    decision = rec.get("final_decision")
    if not isinstance(decision, str) or decision.strip().lower() not in LETTER:
        raise ValueError(f"'final_decision' is {decision!r}, expected yes/no/maybe")
    contexts = rec.get("CONTEXTS", [])
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise ValueError("'CONTEXTS' is not a list of strings")
    labels = rec.get("LABELS", [])
    meta: dict[str, Any] = {
        "final_decision": decision.strip().lower(),
        "year": rec.get("YEAR"),
        "meshes": rec.get("MESHES", []),
        "context_labels": labels if isinstance(labels, list) else [],
    }
    if split is not None:
        meta["split"] = split
    return QAItem(
        id=pmid,
        dataset=NAME,
        text=question.strip(),
        options=dict(OPTIONS),
        gold=LETTER[meta["final_decision"]],
        question_type="yesno",
        passages=list(contexts) if reasoning else [],
        gold_docs=[pmid],
        meta=meta,
    )


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
    ground_truth: str | Path | None = None,
) -> DatasetLoad:
    """Load PQA-L; see the module docstring for ``split``, ``setting`` and ``ground_truth``."""
    if setting == "reasoning-free":
        raise ConfigError(
            "pubmedqa: the reasoning-free setting shows LONG_ANSWER (the answer) and is not "
            "offered; use 'reasoning-required' or 'open'"
        )
    check_choice(split, SPLITS, "split", NAME)
    check_choice(setting, SETTINGS, "setting", NAME)
    file = resolve_file(path, EXPECTED, ("ori_pqal.json",))
    data, raw = read_json(file, EXPECTED)
    if not isinstance(data, dict):
        raise format_error(
            file, EXPECTED, f"the top level is a JSON {type(data).__name__}", "pass ori_pqal.json"
        )
    if data and not any(isinstance(v, dict) and "QUESTION" in v for v in data.values()):
        raise format_error(
            file,
            EXPECTED,
            "no record has a 'QUESTION' field",
            "pass PubMedQA's ori_pqal.json (other benchmarks have their own loaders)",
        )
    test = _ground_truth(file, ground_truth) if split is not None else None
    col = Collector(NAME)
    mismatched = 0

    def make(key: str, rec: Any) -> QAItem:
        nonlocal mismatched
        pmid = str(key).strip()
        part = None if test is None else ("test" if pmid in test else "dev")
        item = _item(pmid, rec, setting == "reasoning-required", part)
        if test is not None and pmid in test and test[pmid] != item.meta["final_decision"]:
            mismatched += 1
        return item

    records = ((None, f"record {str(key).strip()}", key, rec) for key, rec in data.items())
    fix = "pass PubMedQA's ori_pqal.json"
    col.read_records(file, records, make, EXPECTED, fix, lambda key, _: line_of(raw, f'"{key}"'))
    extra: dict[str, Any] = {}
    if test is not None:
        extra["test_missing"] = len(set(test) - set(data))
        extra["test_label_mismatches"] = mismatched
    return col.finish(
        limit=limit,
        split=split,
        setting=setting,
        keep=None if split is None else (lambda it: it.meta.get("split") == split),
        **extra,
    )
