"""BioCDQA (cross-document biomedical QA, 1,183 pairs): JSON or JSON Lines records.

Input: records ``{question, ideal_answer, documents_pid: [pid, ..], type?, id?}`` as JSON Lines,
a JSON array, or a JSON object holding the array under ``data``/``questions``/``items``.
``ideal_answer`` may be a string or a list (the first is the gold); ``documents_pid`` a list
or one id (a string may list several, comma- or space-separated). Optional source sentences
(``source_sentences``, ``answer_sentences``, ``evidence`` or ``snippets``: strings or
``{text}`` objects) become ``gold_snippets``.

Each item: ``question_type="summary"`` (answers are sentences, judged against the ideal
answer), ``gold`` = the ideal answer, ``gold_docs`` = the document ids as strings,
``subset`` = ``meta.type`` = the question category, ``id`` = the record's ``id`` (or
``qid``/``question_id``) else its 0-based position (4 digits). ``split`` keeps one category;
``setting`` may be None or ``"open"``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    as_str_list,
    check_choice,
    iter_records,
    resolve_file,
    text_field,
)

NAME = "biocdqa"
SETTINGS = ("open",)
EXPECTED = "BioCDQA records ({question, ideal_answer, documents_pid, type?}) as JSON or JSONL"
_SNIPPET_KEYS = ("source_sentences", "answer_sentences", "evidence", "snippets")
_SPLIT_RE = re.compile(r"[,;\s]+")


def _docs(value: Any) -> list[str]:
    """``documents_pid`` as a list of id strings."""
    if isinstance(value, str):
        value = [v for v in _SPLIT_RE.split(value) if v]
    if value is not None and not isinstance(value, list | int):
        raise ValueError(f"'documents_pid' is {type(value).__name__}, expected a list of ids")
    return as_str_list(value)


def _snippets(rec: dict) -> list[str]:
    """Source sentences, when the record gives them."""
    for key in _SNIPPET_KEYS:
        value = rec.get(key)
        if isinstance(value, list):
            texts = [v.get("text") if isinstance(v, dict) else v for v in value]
            return [t.strip() for t in texts if isinstance(t, str) and t.strip()]
    return []


def _item(rec: dict, index: int) -> QAItem:
    """One item from a BioCDQA record; :class:`ValueError` says what is wrong with it."""
    question = text_field(rec, "question", "body")
    ideal = rec.get("ideal_answer", rec.get("answer"))
    if isinstance(ideal, list):
        ideal = next((a for a in ideal if isinstance(a, str) and a.strip()), None)
    if not isinstance(ideal, str) or not ideal.strip():
        raise ValueError("missing or empty 'ideal_answer'")
    if "documents_pid" not in rec:
        raise ValueError("missing 'documents_pid'")
    qtype = rec.get("type")
    qtype = qtype.strip() if isinstance(qtype, str) else ""
    rid = next((rec[k] for k in ("id", "qid", "question_id") if rec.get(k) not in (None, "")), None)
    return QAItem(
        id=str(rid).strip() if rid is not None else f"{index:04d}",
        dataset=NAME,
        text=question.strip(),
        gold=ideal.strip(),
        question_type="summary",
        gold_docs=_docs(rec["documents_pid"]),
        gold_snippets=_snippets(rec),
        subset=qtype,
        meta={"type": qtype},
    )


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
) -> DatasetLoad:
    """Load BioCDQA; ``split`` keeps one question category (``type``)."""
    check_choice(setting, SETTINGS, "setting", NAME)
    file = resolve_file(path, EXPECTED)
    col = Collector(NAME)
    records = iter_records(file, col, EXPECTED, ("data", "questions", "items"))
    fix = "pass the BioCDQA file (records with question, ideal_answer)"
    col.read_records(file, records, _item, EXPECTED, fix)
    return col.finish_subset(limit=limit, split=split, setting=setting, blank=False)
