"""MIRAGE (``benchmark.json``): 7,663 multiple-choice questions in five subsets.

Input: ``{subset: {qid: {question, options: {A: ..}, answer: letter, PMID?: [int]}}}`` with the
subsets mmlu, medqa, medmcqa, pubmedqa and bioasq (``path`` may be the file or its folder).
Each item: ``id`` = ``"<subset>/<qid>"`` (qids repeat across subsets), ``subset`` = the subset,
``gold`` = the answer letter, ``gold_docs`` = the PMIDs where given (pubmedqa, bioasq),
``question_type`` = ``"yesno"`` where every option is yes/no/maybe (pubmedqa, bioasq), else
``"multiple_choice"``. ``split`` or ``setting`` names one subset (None = all five);
``setting="open"`` is accepted too and changes nothing (MIRAGE gives no contexts).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    as_str_list,
    choice_item,
    format_error,
    line_of,
    options_field,
    read_json,
    resolve_file,
    text_field,
)
from biorag.errors import ConfigError

NAME = "mirage"
SUBSETS = ("mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq")
EXPECTED = "MIRAGE benchmark.json ({subset: {qid: {question, options, answer}}})"


def _item(subset: str, qid: str, rec: Any) -> QAItem:
    """One item from a MIRAGE record; :class:`ValueError` says what is wrong with it."""
    if not isinstance(rec, dict):
        raise ValueError(f"value is {type(rec).__name__}, expected an object")
    question = text_field(rec, "question")
    options = options_field(rec.get("options"))
    return choice_item(
        NAME, f"{subset}/{qid}", question, options, rec.get("answer"), "answer",
        gold_docs=as_str_list(rec.get("PMID")), subset=subset, meta={"qid": qid},
    )  # fmt: skip


def _subset(split: str | None, setting: str | None, present: list[str]) -> str | None:
    """The one subset that ``split``/``setting`` select (None = all)."""
    chosen = {v for v in (split, None if setting == "open" else setting) if v is not None}
    if len(chosen) > 1:
        raise ConfigError(f"mirage: split {split!r} and setting {setting!r} name different subsets")
    name = next(iter(chosen), None)
    if name is not None and name not in present:
        raise ConfigError(f"mirage: unknown subset {name!r}; use one of: {', '.join(present)}")
    return name


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
) -> DatasetLoad:
    """Load MIRAGE; ``split`` (or ``setting``) selects one subset."""
    file = resolve_file(path, EXPECTED, ("benchmark.json",))
    data, raw = read_json(file, EXPECTED)
    if not isinstance(data, dict) or not any(k in SUBSETS for k in data):
        found = (
            f"the top level is a JSON {type(data).__name__}"
            if not isinstance(data, dict)
            else f"its top-level keys ({', '.join(list(map(str, data))[:5])}) name no subset"
        )
        fix = f"pass MIRAGE's benchmark.json (top-level keys {', '.join(SUBSETS)})"
        raise format_error(file, EXPECTED, found, fix)
    present = [str(k) for k in data]
    wanted = _subset(split, setting, present)
    col = Collector(NAME)

    def records() -> Iterator[tuple[None, str, str, str, Any]]:
        for subset, questions in data.items():
            if not isinstance(questions, dict):
                col.skip(file, line_of(raw, f'"{subset}"'), f"subset {subset}: not an object")
                continue
            for qid, rec in questions.items():
                yield None, f"record {subset}/{qid}", str(subset), str(qid), rec

    def bad_line(subset: str, qid: str, rec: Any) -> int | None:
        return line_of(raw, f'"{qid}"', after=f'"{subset}"')

    fix = "pass MIRAGE's benchmark.json"
    col.read_records(file, records(), _item, EXPECTED, fix, bad_line)
    return col.finish(
        limit=limit,
        split=split,
        setting=setting,
        keep=None if wanted is None else (lambda it: it.subset == wanted),
    )
