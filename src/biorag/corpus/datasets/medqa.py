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
    iter_records,
    mc_type,
    options_field,
    resolve_file,
    text_field,
)

NAME = "medqa"
SETTINGS = ("open",)
EXPECTED = "MedQA JSON Lines ({question, options: {A..}, answer_idx, ...} per line)"


def _item(index: int, rec: dict) -> QAItem:
    """One item from a MedQA record; :class:`ValueError` says what is wrong with it."""
    question = text_field(rec, "question")
    options = options_field(rec.get("options"))
    gold = rec.get("answer_idx")
    answer = rec.get("answer")
    if gold is None and isinstance(answer, str):
        gold = next((k for k, v in options.items() if v.strip() == answer.strip()), None)
    if not isinstance(gold, str) or gold.strip() not in options:
        raise ValueError(f"'answer_idx' {gold!r} is not one of the option letters {list(options)}")
    step = rec.get("meta_info")
    return QAItem(
        id=f"{index:04d}",
        dataset=NAME,
        text=question.strip(),
        options=options,
        gold=gold.strip(),
        question_type=mc_type(options),  # type: ignore[arg-type]
        subset=step if isinstance(step, str) else "",
        meta={"answer_text": answer if isinstance(answer, str) else options[gold.strip()]},
    )


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
    col.start_file(file)
    for index, line, where, rec in iter_records(file, col, EXPECTED, ("data", "questions")):
        try:
            item = _item(index, rec)
        except ValueError as e:
            col.skip(file, line, f"{where}: {e}")
            continue
        col.add(item, file, line, where)
    col.end_file(file, EXPECTED, "pass MedQA's phrases_no_exclude_test.jsonl (US, 4 options)")
    check_choice(split, sorted({it.subset for it in col.items}), "split (USMLE step)", NAME)
    return col.finish(
        limit=limit,
        split=split,
        setting=setting,
        keep=None if split is None else (lambda it: it.subset == split),
    )
