"""The files of an evaluation run directory and the prediction records in it.

A run directory holds::

    run.json           the run's configuration (what a resumed run must match)
    predictions.jsonl  one record per (method, question), appended as each answer finishes
    judgments.jsonl    five-point judge scores of answers (``eval.judging.judge_run``), appended
    metrics.json       per-method metrics, written when every pending question is answered
    report.md          tables shaped like the papers' (``biorag eval report``)
    accuracy.png       accuracy per method per column (when matplotlib is installed)

A prediction record (one JSON line) has the keys of :data:`RECORD_KEYS`. Lines are written
whole, flushed and fsynced one at a time, so a killed run leaves at most one cut-off last line:
:func:`read_predictions` drops it (with a warning) and, with ``repair=True``, truncates it from
the file. The latest record of a (method, question) pair is the one that counts.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.util.jsonl_log import RecordWriter, open_locked, read_jsonl_records

log = logging.getLogger("biorag.eval")

RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
METRICS_FILE = "metrics.json"
REPORT_FILE = "report.md"
CHART_FILE = "accuracy.png"

# The fields a judgment record (``biorag.eval.judging.judge_run``) must have; its key adds
# ``judge_prompt`` (see :func:`judgment_key`).
JUDGMENT_KEY = ("method", "question_id", "answer_sha256", "judge_model")

RECORD_KEYS = (
    "question_id",
    "question",
    "method",
    "subset",
    "question_type",
    "options",
    "prediction",
    "answer_text",
    "gold",
    "correct",
    "parse_failed",
    "context",
    "raw_output",
    "evidence",
    "documents",
    "accounting",
    "seconds",
    "error",
)


def read_predictions(path: str | Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """All complete prediction records of ``path`` in file order (``[]`` when it does not exist).

    See :func:`read_jsonl_records` for the cut-off last line and ``repair``.
    """
    return read_jsonl_records(
        path,
        ("method", "question_id"),
        what="a prediction record",
        redo="that question will be answered again",
        repair=repair,
    )


def judged_text(record: dict[str, Any]) -> str:
    """The answer text a judge scores: ``answer_text``, else a string ``prediction``."""
    text = record.get("answer_text")
    if isinstance(text, str) and text.strip():
        return text
    pred = record.get("prediction")
    return pred if isinstance(pred, str) else ""


def answer_sha256(text: str) -> str:
    """SHA-256 hex of the judged answer text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judgment_key(rec: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(method, question_id, answer_sha256, judge_model, judge_prompt) of a judgment record."""
    return (
        str(rec["method"]),
        str(rec["question_id"]),
        str(rec["answer_sha256"]),
        str(rec["judge_model"]),
        str(rec.get("judge_prompt") or ""),
    )


def read_judgments(path: str | Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """All complete judgment records of ``path`` (a cut-off last line dropped, see records)."""
    return read_jsonl_records(
        path,
        JUDGMENT_KEY,
        what="a judgment record",
        redo="that answer will be judged again",
        repair=repair,
    )


def latest_records(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The last record of every (method, question_id) pair."""
    return {(r["method"], str(r["question_id"])): r for r in records}


PredictionWriter = RecordWriter  # the writer of predictions.jsonl

LOCK_FILE = ".run.lock"


class RunDirLock:
    """An exclusive lock on a run directory, held from before ``run.json`` is read or written
    until the run ends, so a second run into the same directory is refused before it touches
    anything there. Released by the OS if the process dies."""

    def __init__(self, out_dir: str | Path) -> None:
        self.path = Path(out_dir) / LOCK_FILE
        self._fh = open_locked(
            self.path,
            f"another run is using {self.path.parent}; wait for it to finish or write to "
            "another output directory",
        )

    def release(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> RunDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON object from ``path``; a clear error when it is missing or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise BioragError(f"{path} does not exist; is {path.parent} an evaluation run directory?")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise BioragError(f"{path} is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise BioragError(f"{path} is not a JSON object")
    return data
