"""MMLU medical subjects: header-less CSVs ``question,A,B,C,D,answer``, ``<subject>_<part>.csv``.

``path`` is one CSV or a folder: every ``<subject>_{test,val,dev}.csv`` below it whose subject is
one of the six medical ones (anatomy 135, clinical_knowledge 265, college_biology 144,
college_medicine 173, medical_genetics 100, professional_medicine 272 test questions) is read,
in sorted order. A single file is read whatever its subject. Each item: ``subset`` = the
subject, ``meta.part`` = test/val/dev, ``id`` = ``"<subject>-<row:03d>"`` for test files
(MIRAGE's mmlu qids) and ``"<subject>-<part>-<row:03d>"`` otherwise. ``split`` keeps one
subject; ``setting`` may be None or ``"open"``. The paper's "MMLU validation" set is the six
``*_val.csv`` files loaded together.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    check_choice,
    format_error,
    read_text,
)

NAME = "mmlu"
SUBJECTS = (
    "anatomy",
    "clinical_knowledge",
    "college_biology",
    "college_medicine",
    "medical_genetics",
    "professional_medicine",
)
SETTINGS = ("open",)
LETTERS = ("A", "B", "C", "D")
EXPECTED = "an MMLU CSV without header (question,A,B,C,D,answer), e.g. anatomy_test.csv"
_NAME_RE = re.compile(r"^(?P<subject>.+?)_(?P<part>test|val|dev)$")


def _subject_part(path: Path) -> tuple[str, str]:
    """``(subject, part)`` from ``<subject>_<part>.csv`` (part "test" when the name has none)."""
    m = _NAME_RE.match(path.stem)
    return (m["subject"], m["part"]) if m else (path.stem, "test")


def _files(path: Path) -> list[Path]:
    """The CSV itself, or the medical-subject CSVs under a folder."""
    if not path.exists():
        raise format_error(path, EXPECTED, "the path does not exist", "check the path")
    if not path.is_dir():
        return [path]
    files = [p for p in sorted(path.rglob("*.csv")) if _subject_part(p)[0] in SUBJECTS]
    if not files:
        raise format_error(
            path,
            EXPECTED,
            "the folder holds no <subject>_{test,val,dev}.csv of a medical subject",
            f"pass MMLU's data/test folder or one CSV (subjects: {', '.join(SUBJECTS)})",
        )
    return files


def _item(subject: str, part: str, row: list[str], index: int) -> QAItem:
    """One item from a CSV row; :class:`ValueError` says what is wrong with it."""
    if len(row) != 6:
        raise ValueError(f"{len(row)} columns, expected 6 (question,A,B,C,D,answer)")
    question, *texts, answer = row
    if not question.strip():
        raise ValueError("empty question")
    answer = answer.strip().upper()
    if answer not in LETTERS:
        raise ValueError(f"answer {row[5]!r} is not one of A, B, C, D")
    qid = f"{subject}-{index:03d}" if part == "test" else f"{subject}-{part}-{index:03d}"
    return QAItem(
        id=qid,
        dataset=NAME,
        text=question.strip(),
        options=dict(zip(LETTERS, texts, strict=True)),
        gold=answer,
        question_type="multiple_choice",
        subset=subject,
        meta={"part": part},
    )


def _rows(file: Path, col: Collector) -> Iterator[tuple[int, str, list[str], int]]:
    """``(line, where, row, index)`` per non-blank CSV row (a CSV error ends the file, skipped
    into ``col``); ``index`` counts the rows from 0."""
    reader = csv.reader(io.StringIO(read_text(file, EXPECTED), newline=""))
    index = 0
    line = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            col.skip(file, line, f"bad CSV: {e}")
            break
        where, start, line = f"line {line}", line, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        yield start, where, row, index
        index += 1


def load(
    path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
) -> DatasetLoad:
    """Load MMLU medical CSVs; ``split`` keeps one subject."""
    check_choice(setting, SETTINGS, "setting", NAME)
    files = _files(Path(path))
    col = Collector(NAME)
    for file in files:
        make = partial(_item, *_subject_part(file))
        fix = "pass an MMLU <subject>_test.csv or its folder"
        col.read_records(file, _rows(file, col), make, EXPECTED, fix)
    what = "split (subject)"
    return col.finish_subset(limit=limit, split=split, setting=setting, what=what)
