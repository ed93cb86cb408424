"""MedMCQA (``dev.json``, JSON Lines): 4,183 questions, 2,816 of them single-choice.

Input per line: ``{id, question, opa, opb, opc, opd, cop, choice_type, subject_name,
topic_name, exp}``. ``cop`` is the correct option, 1-based in the original release (1 = opa);
pass ``cop_base=0`` for the 0-based Hugging Face export. Each item: ``id`` = the record's
``id`` (MIRAGE's medmcqa qids), options A..D from opa..opd, ``gold`` = the letter,
``subset`` = ``subject_name``, ``meta`` = ``choice_type``, ``topic_name``. The explanation
``exp`` states the answer and is never copied.

``single_only=True`` (default) keeps the single-choice questions; ``info["filtered_multi"]``
says how many multi-choice ones it dropped (``single_only=False`` keeps all 4,183, as MIRAGE
does). ``split`` filters on the subject; ``setting`` may be None or ``"open"``. Records without
a usable answer (the unlabelled test split has none) are skipped.
"""

from __future__ import annotations

from pathlib import Path

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    check_choice,
    iter_records,
    resolve_file,
    text_field,
)
from biorag.errors import ConfigError

NAME = "medmcqa"
SETTINGS = ("open",)
FIELDS = ("opa", "opb", "opc", "opd")
LETTERS = ("A", "B", "C", "D")
EXPECTED = "MedMCQA JSON Lines ({id, question, opa..opd, cop, choice_type} per line)"


def _item(rec: dict, index: int, cop_base: int) -> QAItem:
    """One item from a MedMCQA record; :class:`ValueError` says what is wrong with it."""
    question = text_field(rec, "question")
    options: dict[str, str] = {}
    for letter, name in zip(LETTERS, FIELDS, strict=True):
        value = rec.get(name)
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(f"option {name!r} is missing or not text")
        options[letter] = str(value)
    cop = rec.get("cop")
    try:
        pos = int(cop) - cop_base  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"'cop' {cop!r} is not an option number") from None
    if not 0 <= pos < len(LETTERS):
        hint = " (a 0-based file? pass cop_base=0)" if cop_base == 1 and pos == -1 else ""
        first = cop_base
        raise ValueError(f"'cop' {cop!r} is outside {first}..{first + 3}{hint}")
    choice = str(rec.get("choice_type") or "single").strip().lower()
    subject = rec.get("subject_name")
    rid = rec.get("id")
    return QAItem(
        id=str(rid).strip() if rid not in (None, "") else f"{index:05d}",
        dataset=NAME,
        text=question.strip(),
        options=options,
        gold=LETTERS[pos],
        question_type="multiple_choice",
        subset=subject.strip() if isinstance(subject, str) else "",
        meta={"choice_type": choice, "topic_name": rec.get("topic_name")},
    )


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
    single_only: bool = True,
    cop_base: int = 1,
) -> DatasetLoad:
    """Load MedMCQA; single-choice questions only unless ``single_only=False``."""
    check_choice(setting, SETTINGS, "setting", NAME)
    if cop_base not in (0, 1):
        raise ConfigError(f"medmcqa: cop_base must be 0 or 1, not {cop_base!r}")
    file = resolve_file(path, EXPECTED, ("dev.json", "dev.jsonl"))
    col = Collector(NAME)
    records = iter_records(file, col, EXPECTED, ("data",))
    fix = "pass MedMCQA's dev.json (the test split has no answers)"
    col.read_records(file, records, lambda rec, i: _item(rec, i, cop_base), EXPECTED, fix)
    check_choice(split, sorted({it.subset for it in col.items}), "split (subject)", NAME)
    multi = sum(it.meta["choice_type"] != "single" for it in col.items)

    def keep(it: QAItem) -> bool:
        if single_only and it.meta["choice_type"] != "single":
            return False
        return split is None or it.subset == split

    return col.finish(
        limit=limit,
        split=split,
        setting=setting,
        keep=keep,
        single_only=single_only,
        multi_choice=multi,
        filtered_multi=multi if single_only else 0,
    )
