"""MedQA-USMLE (``phrases_no_exclude_test.jsonl``, 4 options): 1,273 test questions.

Input: JSON Lines (or a JSON array) of ``{question, options: {A..D}, answer_idx: letter,
answer: text, meta_info: "step1"|"step2&3", metamap_phrases}``; ``options`` may also be a list
of ``{key, value}`` and ``answer_idx`` may be missing when ``answer`` matches one option's text.
Each item: ``id`` = the record's 0-based position, 4 digits (``"0000"``: MIRAGE's medqa qids),
``gold`` = the letter, ``subset`` = ``meta_info`` (the USMLE step), ``meta.answer_text``.
``split`` filters on the step (``"step1"``, ``"step2&3"``); ``setting`` may be None or ``"open"``.
"""

from __future__ import annotations

from pathlib import Path

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    check_choice,
    choice_item,
    iter_records,
    options_field,
    resolve_file,
    text_field,
)

NAME = "medqa"
SETTINGS = ("open",)
EXPECTED = "MedQA JSON Lines ({question, options: {A..}, answer_idx, ...} per line)"


def _item(rec: dict, index: int) -> QAItem:
    """One item from a MedQA record; :class:`ValueError` says what is wrong with it."""
    question = text_field(rec, "question")
    options = options_field(rec.get("options"))
    gold = rec.get("answer_idx")
    answer = rec.get("answer")
    if gold is None and isinstance(answer, str):
        gold = next((k for k, v in options.items() if v.strip() == answer.strip()), None)
    step = rec.get("meta_info")
    # (an answer_idx that names no option is refused by choice_item)
    answer_text = answer if isinstance(answer, str) else options.get(str(gold).strip(), "")
    return choice_item(
        NAME, f"{index:04d}", question, options, gold, "answer_idx",
        subset=step if isinstance(step, str) else "", meta={"answer_text": answer_text},
    )  # fmt: skip


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
) -> DatasetLoad:
    """Load MedQA; ``split`` keeps one USMLE step (``meta_info``)."""
    check_choice(setting, SETTINGS, "setting", NAME)
    file = resolve_file(path, EXPECTED, ("phrases_no_exclude_test.jsonl", "test.jsonl"))
    col = Collector(NAME)
    records = iter_records(file, col, EXPECTED, ("data", "questions"))
    fix = "pass MedQA's phrases_no_exclude_test.jsonl (US, 4 options)"
    col.read_records(file, records, _item, EXPECTED, fix)
    what = "split (USMLE step)"
    return col.finish_subset(limit=limit, split=split, setting=setting, what=what)
