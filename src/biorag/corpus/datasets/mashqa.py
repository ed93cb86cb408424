"""MASH-QA (WebMD, multiple-span answers) in its SQuAD-v2-like JSON.

Input: ``{"data": [{"title", "paragraphs": [{"context", "sent_list"?, "sent_starts"?, "qas":
[{"id", "question", "is_impossible", "answers": [{"text", "answer_start", ...}]}]}]}]}``
(one file per split: train/val/test). The loader is lenient about where sentences and the
answer's sentences live:

- sentences: the qa's or the paragraph's ``sent_list`` (or ``sentences``), else the
  paragraph's ``sent_starts`` (``[start, length]`` pairs over ``context``);
- answer sentence ids: the qa's or its first answer's ``answer_sent_ids`` / ``answer_span``
  (sentence indices), else the first answer's ``answer_starts`` (pairs matched to
  ``sent_starts``); without any, the answers' texts are the gold.

Each item: ``question_type="span"``, ``gold`` = the gold sentence strings (``gold_snippets``
too, ``meta.gold_sentence_ids`` their indices), ``context`` = the document's sentences (the
whole ``context`` when it has none; empty with ``setting="open"``), ``meta.title``.
Unanswerable questions (``is_impossible`` or no answer) are left out and counted in
``info["unanswerable"]``. ``split`` is not used: pass the split's file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    check_choice,
    format_error,
    id_line,
    read_json,
    resolve_file,
    text_field,
)
from biorag.errors import ConfigError

NAME = "mashqa"
SETTINGS = ("open", "context")
EXPECTED = 'MASH-QA SQuAD-style JSON ({"data": [{"title", "paragraphs": [{"context", "qas"}]}]})'
_ID_KEYS = ("answer_sent_ids", "answer_span", "answer_sent_idx")


def _sentences(holder: dict, context: str) -> list[str] | None:
    """Sentences from ``sent_list``/``sentences`` or ``sent_starts`` slices (None when absent)."""
    for key in ("sent_list", "sentences"):
        value = holder.get(key)
        if isinstance(value, list) and all(isinstance(s, str) for s in value):
            return value
    starts = holder.get("sent_starts")
    if isinstance(starts, list) and all(isinstance(p, list) and len(p) == 2 for p in starts):
        try:
            return [context[int(a) : int(a) + int(n)] for a, n in starts]
        except (TypeError, ValueError):
            raise ValueError("'sent_starts' holds something other than numbers") from None
    return None


def _sentence_ids(qa: dict, para: dict) -> list[int] | None:
    """Indices of the answer's sentences, wherever the file keeps them (None when absent)."""
    answers = qa.get("answers") if isinstance(qa.get("answers"), list) else []
    first = answers[0] if answers and isinstance(answers[0], dict) else {}
    for holder in (qa, first):
        for key in _ID_KEYS:
            value = holder.get(key)
            if isinstance(value, list) and all(isinstance(i, int) for i in value):
                return sorted(set(value))
    starts, spans = para.get("sent_starts"), first.get("answer_starts")
    if isinstance(starts, list) and isinstance(spans, list):
        return [i for i, p in enumerate(starts) if p in spans]
    return None


def _item(qa: Any, para: dict, title: str, where: str, open_setting: bool) -> QAItem | None:
    """One item, None for an unanswerable question; :class:`ValueError` for a malformed one."""
    if not isinstance(qa, dict):
        raise ValueError(f"not an object ({type(qa).__name__})")
    question = text_field(qa, "question")
    context = para.get("context", "")
    if not isinstance(context, str):
        raise ValueError("paragraph 'context' is not a string")
    sents = _sentences(qa, context) or _sentences(para, context)
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise ValueError("'answers' is not a list")
    if qa.get("is_impossible") or not answers:
        return None
    ids = _sentence_ids(qa, para)
    if ids is not None and sents is not None:
        bad = [i for i in ids if not 0 <= i < len(sents)]
        if bad:
            raise ValueError(f"answer sentence ids {bad} outside the {len(sents)} sentences")
        gold = [sents[i] for i in ids]
    else:
        ids = None
        texts = [a.get("text") for a in answers if isinstance(a, dict)]
        gold = [t for t in texts if isinstance(t, str)]
    gold = [g for g in gold if g.strip()]
    if not gold:
        raise ValueError("no answer text or answer sentence")
    qid = qa.get("id")
    meta: dict[str, Any] = {"title": title}
    if ids is not None:
        meta["gold_sentence_ids"] = ids
    return QAItem(
        id=str(qid).strip() if qid not in (None, "") else where,
        dataset=NAME,
        text=question.strip(),
        gold=gold,
        question_type="span",
        passages=[] if open_setting else (list(sents) if sents else [context] if context else []),
        gold_snippets=list(gold),
        meta=meta,
    )


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
) -> DatasetLoad:
    """Load one MASH-QA file; ``setting="open"`` leaves ``context`` empty."""
    if split is not None:
        raise ConfigError(f"mashqa: no split {split!r}; pass the split's own file instead")
    check_choice(setting, SETTINGS, "setting", NAME)
    file = resolve_file(path, EXPECTED)
    data, raw = read_json(file, EXPECTED)
    articles = data.get("data") if isinstance(data, dict) else data
    if not isinstance(articles, list):
        found = "it has no top-level 'data' list"
        raise format_error(file, EXPECTED, found, "pass a MASH-QA *_webmd_squad_v2*.json file")
    col = Collector(NAME)

    def records() -> Iterator[tuple[None, str, Any, dict, str, str]]:
        for ai, art in enumerate(articles):
            paras = art.get("paragraphs") if isinstance(art, dict) else None
            if not isinstance(paras, list):
                col.skip(file, None, f"data[{ai}]: no 'paragraphs' list")
                continue
            title = str(art.get("title") or "")
            for pi, para in enumerate(paras):
                qas = para.get("qas") if isinstance(para, dict) else None
                if not isinstance(qas, list):
                    col.skip(file, None, f"data[{ai}].paragraphs[{pi}]: no 'qas' list")
                    continue
                for qi, qa in enumerate(qas):
                    where = f"data[{ai}].paragraphs[{pi}].qas[{qi}]"
                    yield None, where, qa, para, title, where

    def make(qa: Any, para: dict, title: str, where: str) -> QAItem | None:
        return _item(qa, para, title, where, setting == "open")

    fix = "pass a MASH-QA *_webmd_squad_v2*.json file"
    unanswerable = col.read_records(
        file, records(), make, EXPECTED, fix, lambda qa, *_: id_line(raw, qa)
    )
    return col.finish(limit=limit, split=split, setting=setting, unanswerable=unanswerable)
