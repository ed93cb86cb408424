"""A predictions file read for scoring without answering (``biorag eval score``), checked
against the benchmark's questions.

Three shapes are read:

* biorag's own ``predictions.jsonl`` (:mod:`.records`): one record per line with
  ``question_id``, ``method``, ``prediction`` and what else the runner writes; a record
  without ``method`` is the file's one method. A record may follow a failed one (``error``) of
  the same method and question: the runner's retry, the later one counts;
* a JSON object ``{question_id: prediction}``, as PubMedQA's ``evaluation.py`` takes it
  (``{pmid: "yes"|"no"|"maybe"}``);
* a BioASQ Task B system response ``{"questions": [{id, exact_answer, documents,
  snippets}]}``: the exact answer as the prediction (none given: unanswered), the documents as
  PMIDs (the URLs' last part), the snippets with their offsets as given (a question without
  any, in a submission that gives snippets elsewhere, as none found: the evaluator's reading).

A submission in the last two shapes is one method, named by ``method`` (default: the file's
name). Every question must have exactly one prediction per method: an id that is no question's,
a question predicted twice, or a question left without one is a :class:`BioragError` naming
the file, the line (where one can be told) and the id, so no score comes of a partial or
mistaken file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.bioasq import official_snippet
from biorag.errors import BioragError

__all__ = ["PredictionsFile", "read_predictions_file"]

SHAPES = (
    "biorag's predictions.jsonl (one JSON record per line), a JSON object "
    '{question_id: prediction} (PubMedQA\'s {pmid: "yes"|"no"|"maybe"}) or a BioASQ '
    'submission {"questions": [...]}'
)


@dataclass
class PredictionsFile:
    """The records of a predictions file (runner-shaped: ``question_id``, ``method``,
    ``prediction``...), one per method and question, in file order."""

    path: Path
    shape: str  # "jsonl" | "mapping" | "bioasq"
    methods: list[str]
    records: list[dict[str, Any]] = field(default_factory=list)


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys it was given more than once."""

    repeated: list[str]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    seen: set[str] = set()
    obj.repeated = []
    for key, _ in pairs:
        if key in seen:
            obj.repeated.append(key)
        seen.add(key)
    return obj


def _line(raw: str, pattern: str, nth: int = 1) -> int | None:
    """1-based line of the ``nth`` match of the regex ``pattern`` in ``raw``, or None."""
    for i, m in enumerate(re.finditer(pattern, raw), start=1):
        if i == nth:
            return raw.count("\n", 0, m.start()) + 1
    return None


def _at(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def read_predictions_file(
    path: str | Path, items: Sequence[QAItem], *, method: str | None = None
) -> PredictionsFile:
    """The checked records of ``path`` for ``items`` (module docstring); ``method``: only that
    method's records of a JSON Lines file, or the name of a submission."""
    path = Path(path)
    if not path.is_file():
        raise BioragError(f"predictions file {path} does not exist", param="predictions")
    raw = path.read_text(encoding="utf-8-sig", errors="replace")  # a BOM is no JSON
    if not raw.strip():
        raise BioragError(f"{path} is empty; pass {SHAPES}", param="predictions")
    try:
        whole = json.loads(raw, object_pairs_hook=_object)
    except ValueError:
        whole = None  # several lines of JSON: biorag's own records
    ids = {it.id for it in items}
    name = method or path.stem
    if isinstance(whole, dict) and isinstance(whole.get("questions"), list):
        records = _bioasq(path, raw, whole["questions"], ids, name)
        shape = "bioasq"
    elif isinstance(whole, dict) and "question_id" not in whole:
        records = _mapping(path, raw, whole, ids, name)
        shape = "mapping"
    elif whole is None or isinstance(whole, dict):
        records = _jsonl(path, raw, ids, method, path.stem)
        shape = "jsonl"
    else:
        raise BioragError(
            f"{path} holds a JSON {type(whole).__name__}; pass {SHAPES}", param="predictions"
        )
    methods = list(dict.fromkeys(r["method"] for r in records))
    if not methods:
        which = f" by method {method}" if method else ""
        raise BioragError(f"{path} has no predictions{which}", param="predictions")
    for m in methods:
        done = {r["question_id"] for r in records if r["method"] == m}
        missing = [it.id for it in items if it.id not in done]
        if missing:
            by = f" by {m}" if shape == "jsonl" else ""
            raise BioragError(
                f"{path}: no prediction{by} for question {missing[0]} ({len(missing)} of "
                f"{len(items)} questions have none); predict every question of the dataset and "
                "split given, or narrow them to the questions predicted",
                param="predictions",
            )
    return PredictionsFile(path, shape, methods, records)


def _unknown(where: str, qid: str) -> BioragError:
    return BioragError(
        f"{where}: question {qid} is not a question of the dataset and split given; predict "
        "only their questions (or pass the data the predictions were made on)",
        param="predictions",
    )


def _jsonl(
    path: Path, raw: str, ids: set[str], only: str | None, default: str
) -> list[dict[str, Any]]:
    """biorag's records, one per (method, question) (a failed one may be retried)."""
    seen: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for n, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as e:
            raise BioragError(
                f"{path}:{n}: not a JSON record ({e.msg}); each line of biorag's predictions "
                f"is one JSON object, or pass {SHAPES}",
                param="predictions",
            ) from None
        qid = rec.get("question_id") if isinstance(rec, dict) else None
        if not isinstance(qid, str | int) or isinstance(qid, bool):
            raise BioragError(
                f"{path}:{n}: the record has no question_id; each line names the question it "
                "predicts (question_id) and its method",
                param="predictions",
            )
        rec = {**rec, "question_id": str(qid), "method": str(rec.get("method") or default)}
        if only is not None and rec["method"] != only:
            continue
        if rec["question_id"] not in ids:
            raise _unknown(f"{path}:{n}", rec["question_id"])
        key = (rec["method"], rec["question_id"])
        if key in seen and not seen[key][1].get("error"):
            raise BioragError(
                f"{path}:{n}: question {key[1]} is predicted by {key[0]} a second time (first "
                f"on line {seen[key][0]}); keep one record per question and method",
                param="predictions",
            )
        seen[key] = (n, rec)
    return [rec for _, rec in seen.values()]


def _mapping(
    path: Path, raw: str, obj: dict[str, Any], ids: set[str], method: str
) -> list[dict[str, Any]]:
    """``{question_id: prediction}`` (a prediction object's fields are kept)."""
    repeated = getattr(obj, "repeated", [])
    if repeated:
        qid = repeated[0]
        line = _line(raw, rf'"{re.escape(qid)}"\s*:', nth=2)
        raise BioragError(
            f"{_at(path, line)}: question {qid} is predicted twice; keep one prediction per "
            "question",
            param="predictions",
        )
    out = []
    for qid, value in obj.items():
        if qid not in ids:
            raise _unknown(_at(path, _line(raw, rf'"{re.escape(qid)}"\s*:')), qid)
        fields = dict(value) if isinstance(value, dict) else {"prediction": value}
        out.append({**fields, "question_id": qid, "method": method})
    return out


def _bioasq(
    path: Path, raw: str, questions: list[Any], ids: set[str], method: str
) -> list[dict[str, Any]]:
    """A BioASQ system response as records (module docstring)."""
    out: dict[str, dict[str, Any]] = {}
    for i, q in enumerate(questions):
        qid = q.get("id") if isinstance(q, dict) else None
        if not isinstance(qid, str):
            raise BioragError(
                f"{path}: questions[{i}] has no string id; each question of a BioASQ "
                "submission names the question it answers",
                param="predictions",
            )
        pattern = rf'"id"\s*:\s*"{re.escape(qid)}"'
        if qid in out:
            raise BioragError(
                f"{_at(path, _line(raw, pattern, nth=2))}: question {qid} is answered twice; "
                "keep one answer per question",
                param="predictions",
            )
        if qid not in ids:
            raise _unknown(_at(path, _line(raw, pattern)), qid)
        docs = q.get("documents") if isinstance(q.get("documents"), list) else []
        rec: dict[str, Any] = {
            "question_id": qid,
            "method": method,
            "prediction": q.get("exact_answer", ""),
            "documents": [str(d).rstrip("/").rsplit("/", 1)[-1].strip() for d in docs],
        }
        if isinstance(q.get("snippets"), list):
            rec["snippets"] = [s for s in map(official_snippet, q["snippets"]) if s is not None]
        out[qid] = rec
    if any("snippets" in rec for rec in out.values()):  # a phase A submission: the evaluator
        for rec in out.values():  # scores a question answered without snippets as none found
            rec.setdefault("snippets", [])
    return list(out.values())
